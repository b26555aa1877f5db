"""engram.memory"""
