"""Text tools the other families share: embeddings, the dense index, dates, people in text."""
