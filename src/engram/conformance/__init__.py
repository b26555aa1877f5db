"""engram.conformance"""
