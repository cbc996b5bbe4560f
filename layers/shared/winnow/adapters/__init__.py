"""Adapters: implementations of the ports on real providers (Voyage, ONNX, Qdrant, S3, DynamoDB)."""
