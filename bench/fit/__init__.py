"""Model fitting: the merge model and the NLI model check, with the constants they print."""
