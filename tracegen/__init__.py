"""RTCE round-trip code execution data: LZW / arithmetic coding / RLE / Huffman, benchmark inputs, the four prediction
tasks, execution traces and SFT corpora. Filled in by the RTCE corpus issue; nothing here yet.
"""
