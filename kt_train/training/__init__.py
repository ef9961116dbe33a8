"""Supervised fine-tuning runtime shared by the recipes: model loading, data preparation, W&B, the SFT run."""
