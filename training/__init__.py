"""speakerflow.training"""
