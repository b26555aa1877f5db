"""engram.context"""
