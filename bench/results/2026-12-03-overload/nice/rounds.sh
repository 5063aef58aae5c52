#!/bin/bash
# cells at nice 5: the process rows in cells mode, 3 rounds, as ../rounds.sh
CONTAINERS=0 ONLY='^process-.*-cells-(10|500)$' OUT=/tmp/ov-nice exec "$(dirname "$0")/../rounds.sh"
