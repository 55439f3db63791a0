import sys
from pathlib import Path

# Test helpers (reference models shared by several test files) live beside the tests.
sys.path.insert(0, str(Path(__file__).parent))
