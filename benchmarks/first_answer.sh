#!/usr/bin/env bash
# The first answer of `make run` (docs/results/two-commands.md): clone REPO into DEST (unless it is there: then this
# times a second `make run` in it), start `make run` with the API on PORT, and send the README's request every second
# until it is answered. Prints the seconds from the start to the answer and the 1-minute load average seen meanwhile;
# DEST.LABEL.log holds make run's output, each line stamped with the seconds since the start. The service is left
# running: `kill -- -$(cat DEST.LABEL.pgid)` stops it.
# usage: benchmarks/first_answer.sh REPO DEST PORT LABEL
set -u
repo=$1 dest=$2 port=$3 label=$4
log=$dest.$label.log
start=$(date +%s.%N)
if [ ! -d "$dest" ]; then git clone -q "$repo" "$dest"; fi
cd "$dest"
export PREDICTOR_API_PORT=$port START=$start
setsid bash -c 'make run 2>&1 | while IFS= read -r line; do printf "%7.1f %s\n" "$(echo "$(date +%s.%N) - $START" | bc)" "$line"; done' > "$log" &
echo $! > "$dest.$label.pgid"
loads=()
answer=""
while :; do
  now=$(echo "$(date +%s.%N) - $start" | bc)
  loads+=("$(cut -d' ' -f1 /proc/loadavg)")
  if out=$(curl -sf -m 10 -X POST http://127.0.0.1:$port/v1/predict -H 'content-type: application/json' \
      -d '{"algorithm": "mafft", "params": {"input": "samples/family-40x300.fa"}}'); then
    answer=$out; break
  fi
  if (( $(echo "$now > 5400" | bc) )); then echo "gave up"; break; fi
  sleep 1
done
end=$(echo "$(date +%s.%N) - $start" | bc)
echo "label=$label first answer after ${end} s; 1-min load while waiting min/max: $(printf '%s\n' "${loads[@]}" | sort -n | head -1)/$(printf '%s\n' "${loads[@]}" | sort -n | tail -1); loadavg at answer: $(cat /proc/loadavg)"
echo "$answer" | head -c 700; echo
