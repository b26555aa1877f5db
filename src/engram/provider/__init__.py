"""engram.provider"""
