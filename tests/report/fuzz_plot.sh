# vramctl plot reads files others made: the fuzz target (tests/report/
# fuzz_plot.c) runs briefly here, over its seeds (tests/report/fuzz/ and the
# known trace) and a fixed sequence of mutations of them; any crash,
# sanitizer report, input over 20 s or process over 1 GiB fails. Longer
# runs with libFuzzer: `make fuzz-plot`.
. "$VR_SRC/tests/report/lib.bash"
"$VR_BUILD/tests/report/fuzz_plot" 300 "$VR_SRC"/tests/report/fuzz/*.json \
	"$VR_SRC/tests/report/known_trace.json" >out 2>err
expect_rc 0 $? "the fuzz target: $(tail -n 3 err)"
expect_grep "300 mutations read and drawn" out "the fuzz target's runs"
finish
