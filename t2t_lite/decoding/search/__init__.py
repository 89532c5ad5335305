"""The search over a trained model's outputs: beam search, joint CTC/attention, CTC greedy."""
