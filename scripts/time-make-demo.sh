#!/bin/sh
# time-make-demo.sh times `make demo` from a fresh clone of this repository
# to the demo's first window, under xvfb-run (a virtual X display), twice:
# the first run builds in the clone (with the Go module cache as it is, and
# the build cache as it is unless -cold gives it an empty one), the second
# run is a new `make demo` in the same clone. Each run is stopped as soon as
# its window is mapped. Nothing is downloaded but what `make demo` itself
# installs with apt-get; the clone is made from this checkout, not a network.
#
#   scripts/time-make-demo.sh [-cold] [-keep]
#
# Needs xvfb-run and xwininfo (Debian: xvfb x11-utils). Prints one line per
# run: "run N: window after S s".
set -eu
cold=0 keep=0
for a in "$@"; do
	case $a in
	-cold) cold=1 ;;
	-keep) keep=1 ;;
	*) echo "usage: $0 [-cold] [-keep]" >&2; exit 2 ;;
	esac
done
for t in xvfb-run xwininfo git make; do
	command -v $t >/dev/null || { echo "time-make-demo: $t is missing (Debian: apt-get install xvfb x11-utils)" >&2; exit 1; }
done
src=$(git -C "$(dirname "$0")" rev-parse --show-toplevel)
dir=$(mktemp -d /tmp/ragsync-fresh.XXXXXX)
[ $keep = 1 ] || trap 'rm -rf "$dir"' EXIT
git clone -q --no-hardlinks "$src" "$dir/repo"
if [ $cold = 1 ]; then
	export GOCACHE="$dir/gocache"
	echo "build cache: empty ($GOCACHE)"
else
	echo "build cache: $(go env GOCACHE)"
fi
echo "module cache: $(go env GOMODCACHE)"

# once runs `make demo ARGS=-bot` in the clone on the display $DISPLAY and
# prints the seconds until a window titled "ragsync demo" is mapped.
cat > "$dir/once.sh" <<'INNER'
#!/bin/sh
cd "$1"
touch "$2.start"
start=$(date +%s.%N)
setsid make demo ARGS=-bot > "$2" 2>&1 &
pid=$!
polls=0
while :; do
	# Each xwininfo costs Xvfb tens of ms of CPU (at 10 a second, most of
	# a core, taken from the build being timed): during a build (after 5
	# s and until the window program is newer than this run) look once a
	# second, else every 0.1 s.
	if ! kill -0 $pid 2>/dev/null; then
		echo "make demo exited before a window showed; its output:" >&2
		cat "$2" >&2
		exit 1
	fi
	polls=$((polls + 1))
	if [ $polls -gt 50 ] && { [ ! -e .bin/window ] || [ .bin/window -ot "$2.start" ]; }; then
		sleep 1
		continue
	fi
	if xwininfo -root -tree 2>/dev/null | grep -q '"ragsync demo"'; then
		end=$(date +%s.%N)
		break
	fi
	sleep 0.1
done
kill -TERM -$pid 2>/dev/null || kill -TERM $pid 2>/dev/null || true
wait $pid 2>/dev/null || true
echo "$start $end" | awk '{printf "%.1f\n", $2-$1}'
INNER
chmod +x "$dir/once.sh"
for n in 1 2; do
	s=$(xvfb-run -a "$dir/once.sh" "$dir/repo" "$dir/make-$n.log")
	echo "run $n: window after $s s"
done
