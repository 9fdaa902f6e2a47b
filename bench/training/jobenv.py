"""What the self-launcher tells each rank of a training job, by environment (torch-free: the
launcher itself never imports torch)."""

CASE_START_ENV = "COMMBENCH_CASE_START"
CASE_SKIP_ENV = "COMMBENCH_CASE_SKIP"  # indices that have a record already (a resumed run)
BACKEND_ENV = "COMMBENCH_TRAINING_BACKEND"  # the self-launcher's choice for its whole sweep
