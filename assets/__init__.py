"""speakerflow.assets"""
