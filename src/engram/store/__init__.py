"""engram.store"""
