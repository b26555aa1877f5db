"""engram.mcp"""
