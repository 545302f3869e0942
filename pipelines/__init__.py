"""speakerflow.pipelines"""
