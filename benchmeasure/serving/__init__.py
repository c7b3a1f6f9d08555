"""Starting, waiting for and stopping model servers (vLLM on GPU or CPU, the simulated server).

Nothing in the analysis layers depends on this package; the shell scripts reach it through the
command line (``benchmeasure serve …``), and the CPU real run (:mod:`benchmeasure.serving.cpu_run`)
drives BenchFill's pieces end to end against a real small model.
"""
