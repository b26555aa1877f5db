"""engram.runtime"""
