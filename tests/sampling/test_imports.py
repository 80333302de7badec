import pytest
import subprocess
import sys


@pytest.mark.slow
def test_importing_sampling_loads_no_trainer_tracking_or_model_library():
    code = (
        "import sys, mlgrpo.sampling; "
        "print(' '.join(m for m in ('mlflow', 'transformers', 'trl') if m in sys.modules))"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == ""
