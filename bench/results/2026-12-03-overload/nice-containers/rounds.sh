#!/bin/bash
# cells at nice 5 in containers (thumbd:scratch at b949612): the container
# rows in cells mode, 3 rounds, as ../rounds.sh
ONLY='^container-.*-cells-(10|500)$' OUT=/tmp/ov-nicec exec "$(dirname "$0")/../rounds.sh"
