"""engram.core"""
