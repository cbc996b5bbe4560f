"""The API's request and response models, one module per group of routes; ``common`` holds what all share."""
