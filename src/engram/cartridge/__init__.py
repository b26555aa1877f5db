"""engram.cartridge (being rewritten)."""
