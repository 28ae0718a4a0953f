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
head -n 5 "$K" >cut.json
printf 'not json at all\n' >junk.json
{ head -n 3 "$K"; echo ',{"name":'; echo ']}'; } >bad.json
echo '{"traceEvents":[]}' >empty.json
refused missing.json x.png "vramctl: plot: cannot read missing.json: No such file or directory"
refused cut.json x.png "ends early"
refused junk.json x.png "is not JSON"
refused bad.json x.png "bad.json line 4: not a JSON event"
refused empty.json x.png "holds no memory counters"
refused "$K" x.gif "must end in .svg or .png"
refused "$K" /nonexistent-dir/x.png "cannot write /nonexistent-dir/x.png"
[ ! -e x.png ] || fail "a picture was written from bad input"
finish
