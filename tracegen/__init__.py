"""RTCE round-trip code execution data (papers 000/001).

`tracegen.algorithms` holds LZW, arithmetic coding (float and exact), RLE and Huffman as plain functions plus the
`main_solution` sources shown to models; `tracegen.inputs` the 250 benchmark inputs in 56 categories
(`tracegen.release`: the paper's released ones); `tracegen.tasks` the four prediction tasks and round-trip chains,
`tracegen.prompts` their prompt styles; `tracegen.benchmark` writes the corpus
(`kt rtce build`); `tracegen.traces` snoop execution traces run in the sandbox (`kt traces collect`);
`tracegen.translate` traces to natural language (`kt traces translate`); `tracegen.sft_data` chat SFT corpora
(`kt sft-data build`).
"""
