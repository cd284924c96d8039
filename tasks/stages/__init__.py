"""The pipeline's stages, one module each (their order is :data:`tasks.pipeline.PIPELINE`)."""
