# vramctl plot: a known trace (tests/report/known_trace.json: cap 1 GiB,
# peak 768 MiB at 2 s, a denial at 3 s, a spill at 3.5 s, two processes)
# drawn as PNG (cairo) and as SVG rendered by a real renderer (rsvg-convert),
# then looked at: each element's colour where the layout puts it. Never a
# byte comparison of our own output. Bad input: a clear error, exit 125.
. "$VR_SRC/tests/report/lib.bash"
K=$VR_SRC/tests/report/known_trace.json
C=$VR_BUILD/tests/report/pngcheck

"$V" plot "$K" -o k.png
expect_rc 0 $? "plot to PNG"
"$V" plot "$K" -o k.svg
expect_rc 0 $? "plot to SVG"
grep -q '<svg' k.svg || fail "k.svg is not SVG"
if command -v rsvg-convert >/dev/null; then
	rsvg-convert --width 1200 --keep-aspect-ratio k.svg -o svg.png ||
		fail "rsvg-convert cannot render the SVG"
	pics="k.png svg.png"
else
	echo "note: rsvg-convert missing (librsvg2-bin): the SVG is not rendered"
	pics=k.png
fi
# The whole-document reader (not the line-by-line one) draws the same.
jq . "$K" >pretty.json
"$V" plot pretty.json -o pretty.png
expect_rc 0 $? "plot of a pretty-printed trace"
pics="$pics pretty.png"

# look PIC R G B X0 Y0 X1 Y1 -> sets count, row, rowcount
look() {
	set -- $("$C" "$@")
	count=$2 row=$4 rowcount=$6
}
# seen PIC WHAT MIN R G B X0 Y0 X1 Y1: at least MIN pixels of that colour
# in the rectangle
seen() {
	local pic=$1 what=$2 min=$3
	shift 3
	look "$pic" "$@"
	[ "$count" -ge "$min" ] || fail "$pic: $what ($count pixels, expected $min or more)"
}
# Layout (plot_draw.c): 1200 px wide, title band 56 px, plot area x 96..900,
# y 90..380; y axis to 1.12 x max(cap, peak) = 1.12 GiB; x axis to 4 s.
for pic in $pics; do
	seen "$pic" "no title text" 300 25 25 25 0 0 1200 50
	# The cap: a dashed red line across the plot at 1 GiB (y = 120).
	look "$pic" 214 38 41 96 90 900 380
	[ "$row" -ge 118 ] && [ "$row" -le 123 ] || fail "$pic: cap line at row $row, not ~120"
	[ "$rowcount" -ge 400 ] || fail "$pic: cap line has $rowcount red pixels, expected a dashed line"
	seen "$pic" "group line missing" 600 26 51 115 96 90 900 381
	# The peak: an orange dot at 2 s, 768 MiB (x 498, y ~186).
	seen "$pic" "no peak dot at 2 s / 768 MiB" 60 255 127 13 488 176 508 196
	# The denial: a red triangle on the top edge at 3 s (x 699); the
	# spill: a purple diamond at 3.5 s (x 800).
	seen "$pic" "no denial mark at 3 s" 20 214 38 41 689 76 709 90
	seen "$pic" "no spill mark at 3.5 s" 20 148 102 189 790 76 810 91
	# Both processes' lines, the legend (right of the plot), the axes' numbers.
	seen "$pic" "process 101's line missing" 100 43 160 43 96 90 900 381
	seen "$pic" "process 102's line missing" 100 31 119 181 96 90 900 381
	seen "$pic" "no legend text" 300 25 25 25 950 80 1200 240
	seen "$pic" "no y axis labels" 100 25 25 25 0 90 92 390
	seen "$pic" "no x axis labels" 100 25 25 25 90 384 905 420
done

# What the cap counts (#35): a trace with on-card and spilled counters
# (tests/report/known_card_trace.json: cap 1 GiB, 896 MiB allocated and 960
# MiB on the card from 1 s to 4 s, 256 MiB spilled from 2.5 s to 3.5 s).
# The thick line is on the card (960 MiB: row ~176 on an axis to 1.12 x
# (960 + 256) MiB), the allocations a dashed line below it (896 MiB: row
# ~189), and the spill a band stacked on the thick line, only while it lasts.
KC=$VR_SRC/tests/report/known_card_trace.json
"$V" plot "$KC" -o kc.png
expect_rc 0 $? "plot of a trace on the card"
look kc.png 26 51 115 340 90 450 181
[ "$row" -ge 173 ] && [ "$row" -le 178 ] && [ "$rowcount" -ge 100 ] ||
	fail "kc.png: the thick line at row $row ($rowcount pixels), not on the card's ~176"
look kc.png 26 51 115 340 181 450 200
[ "$row" -ge 187 ] && [ "$row" -le 191 ] || fail "kc.png: no allocations' line at ~189 (row $row)"
seen kc.png "no spill band while it spilled" 3000 218 201 232 620 125 780 165
look kc.png 218 201 232 300 125 580 165
[ "$count" -lt 1000 ] || fail "kc.png: a spill band before the spill ($count pixels)"

# A trace from a real run plots too.
if has_cap && sim_only; then
	"$V" run --limit 1G --trace t.json -- "$VR_BUILD/tests/report/memprog" keep 100 temp 200 2>/dev/null
	"$V" plot t.json -o t.png
	expect_rc 0 $? "plot of a real run's trace"
fi

# Bad input: one message naming the problem, exit 125, no picture.
# refused TRACE OUT MESSAGE
refused() {
	"$V" plot "$1" -o "$2" 2>err
	expect_rc 125 $? "plot $1 -o $2"
	expect_grep "$3" err "plot $1 -o $2"
}
printf 'not json at all\n' >junk.json
{ head -n 3 "$K"; echo ',{"name":'; echo ']}'; } >bad.json
echo '{"traceEvents":[]}' >empty.json
refused missing.json x.png "vramctl: plot: cannot read missing.json: No such file or directory"
refused junk.json x.png "is not JSON"
[ "$(wc -l <err)" = 1 ] || fail "garbage input: more than one line: $(cat err)"
refused /tmp x.png "/tmp is a directory, not a trace"
refused bad.json x.png "bad.json line 4: not a JSON event"
refused empty.json x.png "holds no memory counters"
refused "$K" x.gif "must end in .svg or .png"
refused "$K" /nonexistent-dir/x.png "cannot write /nonexistent-dir/x.png"
[ ! -e x.png ] || fail "a picture was written from bad input"

# A trace cut short (its run killed with -9), even mid-line, is drawn up to
# the cut, and said to be cut.
for cut in 12 "12 half"; do
	set -- $cut
	{ head -n "$1" "$K"; [ -n "${2:-}" ] && sed -n "$(($1 + 1))p" "$K" | head -c 20; } >cut.json
	"$V" plot cut.json -o cut.png 2>err
	expect_rc 0 $? "plot of a trace cut at line $cut"
	expect_grep "cut.json ends early, after line $1: a trace cut short; drawing what it holds" \
		err "the cut trace's note"
	[ -s cut.png ] || fail "no picture of the cut trace"
done
# The picture's suffix in capitals.
"$V" plot "$K" -o caps.PNG
expect_rc 0 $? "plot -o caps.PNG"

# Files others made end in bounded time and memory (tests/report/fuzz_plot.sh
# fuzzes the reader and the drawing): a time that is not finite (the 92-byte
# trace that once grew an SVG to 13.6 GB) or absurd is skipped and said.
refused "$VR_SRC/tests/report/fuzz/ts_inf.json" x.svg \
	"holds no memory counters that can be drawn (1 skipped: a time, size or PID not finite"
"$V" plot "$VR_SRC/tests/report/fuzz/huge_values.json" -o huge.svg 2>err
expect_rc 0 $? "plot of a trace with absurd values beside good ones"
expect_grep "huge_values.json: 4 events skipped" err "the absurd values' note"
# A million marks, or thousands of processes, draw a picture whose size is
# bounded by its width: marks once per pixel column and kind, and at most 32
# process lines a device (those with the highest peaks).
awk 'BEGIN {
	print "{\"traceEvents\":[";
	print "{\"name\":\"in use\",\"ph\":\"C\",\"pid\":1000000000,\"ts\":0,\"args\":{\"bytes\":1048576}}";
	for (i = 0; i < 200000; i++)
		printf ",{\"name\":\"denied\",\"ph\":\"i\",\"pid\":1000000000,\"ts\":%d,\"args\":{\"bytes\":4096}}\n", i;
	for (i = 0; i < 5000; i++)
		printf ",{\"name\":\"GPU 0 in use\",\"ph\":\"C\",\"pid\":%d,\"ts\":%d,\"args\":{\"bytes\":%d}}\n", i + 1, i, i * 4096;
	print "]}" }' >many.json
"$V" plot many.json -o many.svg 2>err
expect_rc 0 $? "plot of 200,000 denials and 5,000 processes"
expect_grep "many.json: 904 events skipped" err "the processes past the bound"
size=$(stat -c %s many.svg)
[ "$size" -lt 1000000 ] || fail "the SVG of many marks holds $size bytes"
[ "$(grep -c '<path' many.svg)" -lt 3000 ] || fail "the SVG draws $(grep -c '<path' many.svg) paths"
finish
