"""engram.cartridge"""
