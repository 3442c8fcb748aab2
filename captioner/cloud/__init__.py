"""Cloud side: AWS credentials (profiles or OS-keyring keys) and the SageMaker control plane."""
