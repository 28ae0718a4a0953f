# vramctl completion: the engine reads every subcommand's --help (so each
# must answer it quickly and in the parsed form), and the bash and zsh
# scripts, driven in a real bash (as bash calls a completion function) and
# a real zsh, offer the right words.
. "$VR_SRC/tests/cli/common.bash"
export PATH=$VR_BUILD:$PATH VRAMSIM_DEVICES=16G,8G
export HOME=$TMPDIR/home JUPYTER_DATA_DIR=$TMPDIR/jupyter JUPYTER_PATH=$TMPDIR/jpath
mkdir -p "$HOME" "$JUPYTER_PATH/kernels/pyk"
echo '{"argv": ["python3", "-f", "{connection_file}"], "display_name": "k"}' \
	>"$JUPYTER_PATH/kernels/pyk/kernel.json"

# Every subcommand (and sub-subcommand) answers --help at once with a usage
# line: that is what completion lists options from.
helps() { # helps WORDS...: checks "vramctl WORDS --help", recurses into commands:
	local out
	out=$(timeout 5 vramctl "$@" --help </dev/null)
	[ $? = 0 ] || { fail "'vramctl $* --help' did not exit 0 at once"; return; }
	grep -q "^usage: vramctl${*:+ $*}" <<<"$out" || fail "'vramctl $* --help': no 'usage: vramctl $*' line"
	local sub
	for sub in $(awk '/^commands:$/ { on = 1; next } on && /^  [a-z]/ { print $1; next } { on = 0 }' <<<"$out"); do
		helps "$@" "$sub"
	done
}
helps

# The simulated card's two devices (a real driver's are whatever it has).
if sim_only; then
	uuid0=$(vramctl completion --complete 3 vramctl run --limit G | head -n 2 | tail -n 1)
	case $uuid0 in GPU-*=) ;; *) fail "no device UUID offered for --limit: '$uuid0'" ;; esac
	devices="0= 1= $uuid0"
else
	devices=
fi
# A live group in the books (held by a run until the test ends).
mkfifo ready hold
vramctl run --group trainers --limit 1G -- sh -c 'echo up >ready; read -r _ <hold' &
holder=$!
read -r _ <ready
release_group() { echo go >hold; wait $holder; }
# The engine itself exits 0 (under the sanitizers too: a leak or an error
# there would only show as an exit status, its stderr goes to /dev/null).
while read -r line; do
	eval "vramctl completion --complete $line" >/dev/null ||
		fail "'vramctl completion --complete $line' exited $?"
done <<'CASES'
1 vramctl ''
2 vramctl run -
3 vramctl run --limit 0=4G,
3 vramctl run --group ''
4 vramctl run --limit 1G ech
3 vramctl kernel install --from
4 vramctl status --format = j
9 vramctl too few
CASES
vramctl completion --complete 3 vramctl status --registry '' | head -n 1 >out
expect_grep dirs out "a DIR value completes directories"

# --- bash, as bash's programmable completion calls the function ---------------
bash_complete() { # bash_complete WORD... (the last word is under the cursor)
	bash --norc --noprofile -c '
		[ -n "${WITH_BC:-}" ] && . /usr/share/bash-completion/bash_completion
		source <(vramctl completion bash)
		COMP_WORDS=("$@"); COMP_CWORD=$(($# - 1))
		COMP_LINE="$*"; COMP_POINT=${#COMP_LINE}
		_vramctl vramctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort' bash "$@" 2>/dev/null
}
expect_words() { # expect_words "WANT..." WORD...: every wanted word offered
	local want=$1 got w
	shift
	got=$("${complete:-bash_complete}" "$@")
	for w in $want; do
		grep -qxF -- "$w" <<<"$got" || fail "'$*': '$w' not offered (got: $(echo $got))"
	done
}
expect_none() { # expect_none "UNWANTED..." WORD...
	local bad=$1 got w
	shift
	got=$("${complete:-bash_complete}" "$@")
	for w in $bad; do
		grep -qxF -- "$w" <<<"$got" && fail "'$*': '$w' offered (got: $(echo $got))"
	done
}

cases() {
	expect_words "run status top export demo kernel completion" vramctl ''
	expect_words "run" vramctl ru
	expect_none "status" vramctl ru
	expect_words "--limit --group --growth --exec --" vramctl run -
	# "--spill[=SIZE]": an option with an optional value, offered as --spill.
	expect_words "--spill" vramctl run --sp
	expect_words "--group --growth" vramctl run --g
	expect_words "$devices" vramctl run --limit ''
	expect_words "4K 4M 4G 4T 4%" vramctl run --limit 4
	expect_words "4G" vramctl run -l 4
	expect_words "0=4G 0=4%" vramctl run --limit 0=4
	# --guarantee (issue #26): the cap's grammar, offered as the cap's.
	expect_words "--guarantee" vramctl run --gu
	expect_words "4K 4M 4G 4T 4%" vramctl run --limit 4G --guarantee 4
	expect_words "0=4G 0=4%" vramctl run --guarantee 0=4
	expect_words "--guarantee" vramctl kernel install --gu
	expect_words "--guarantee" vramctl cdi generate --gu
	expect_words "trainers" vramctl run --group ''
	expect_words "trainers" vramctl run --limit 1G --group tr
	expect_words "table json prom" vramctl status --format ''
	expect_words "bash zsh" vramctl completion ''
	expect_words "install list remove" vramctl kernel ''
	expect_words "--limit --from --name --user --sys-prefix --system" vramctl kernel install -
	expect_words "pyk" vramctl kernel install --limit 1G --from ''
	expect_words "pyk" vramctl kernel remove ''
	expect_words "--filter --registry --delay" vramctl top -
}
cases
# Bash splits words at '=' (COMP_WORDBREAKS): the part after it is replaced.
sim_only && expect_words "0= 1=" vramctl run --limit = ''
expect_words "4G 4%" vramctl run --limit = 0 = 4
sim_only && expect_words "4G,1=" vramctl run --limit 0 = 4G,
# A device the spec names already is not offered again.
sim_only && expect_none "4G,0=" vramctl run --limit 0 = 4G,
expect_words "json" vramctl status --format = j
# The command after -- (or after the options) is completed as a command,
# and its arguments as that command's.
expect_words "printf" vramctl run --limit 1G -- printf
expect_words "printf" vramctl run --limit 1G printf
if [ -r /usr/share/bash-completion/bash_completion ]; then
	WITH_BC=1 expect_words "printf" vramctl run --limit 1G -- printf
	mkdir -p files && touch files/alpha.txt
	WITH_BC=1 expect_words "files/alpha.txt" vramctl run --limit 1G -- cat files/al
	expect_none "--limit" vramctl run --limit 1G -- cat --l
else
	echo "note: bash-completion not installed; _command_offset not tested"
fi

# --- a real line editor: bash's readline and zsh's zle, under tmux ---------
# (what the shells really split and insert; capture-pane drops trailing
# blanks, so a space after a completed word shows as the space before an X
# typed after it)
sock=$TMPDIR/tmux.sock
tkeys() { tmux -S "$sock" send-keys "$@"; }
tscreen() { tmux -S "$sock" capture-pane -p; }
# tuntil G TEXT WHAT: until `grep -qGF TEXT` finds it on the screen (at most
# ~10 s); else fails saying WHAT, with the screen.
tuntil() {
	local i
	for i in $(seq 100); do
		tscreen | grep -q"$1"F -- "$2" && return 0
		sleep 0.1
	done
	fail "$shell: $3:"; tscreen | sed 's/^/      /' >&2
	return 1
}
twait() { tuntil "" "$1" "'$1' never appeared"; } # twait TEXT: until the screen shows it
# tline PROMPT: until the line being edited is the prompt alone (Enter is
# never pressed at PROMPT: its one line is the current one)
tline() { tuntil x "${1% }" "the prompt '$1' never came back clean"; }
ttype() { # ttype PROMPT KEYS...: a fresh line, then the keys (no typing
	# over a line still being redrawn: a slow completion in a sanitizer
	# build garbled the next line's start)
	local prompt=$1
	shift
	tkeys C-u
	tline "$prompt"
	tkeys "$@"
}
tstart() { # tstart SHELL-COMMAND: an interactive shell with this test's environment
	tmux -S "$sock" new-session -d -x 200 -y 50 \
		"env PATH='$PATH' HOME='$HOME' JUPYTER_PATH='$JUPYTER_PATH' JUPYTER_DATA_DIR='$JUPYTER_DATA_DIR' VRAMSIM_DEVICES='$VRAMSIM_DEVICES' VRAMSIM_STATE_DIR='$VRAMSIM_STATE_DIR' VRAMCTL_REGISTRY_DIR='$VRAMCTL_REGISTRY_DIR' LD_LIBRARY_PATH='${LD_LIBRARY_PATH:-}' $1"
}
if ! command -v tmux >/dev/null; then
	echo "note: tmux not installed; no shell driven interactively"
	release_group
	finish
fi

shell=bash
vramctl completion bash >bash_vramctl
tstart "bash --norc --noprofile -i"
tkeys "PS1='bash> '; bind 'set show-all-if-ambiguous on'; [ -r /usr/share/bash-completion/bash_completion ] && . /usr/share/bash-completion/bash_completion; . $PWD/bash_vramctl; echo READY" Enter
twait READY
ttype "$shell> " 'vramctl ru' Tab X
twait 'bash> vramctl run X'
# Readline splits at '=': what follows it is completed and inserted.
ttype "$shell> " 'vramctl status --format=j' Tab X
twait 'bash> vramctl status --format=json X'
ttype "$shell> " 'vramctl run --group tr' Tab X
twait 'bash> vramctl run --group trainers X'
if sim_only; then
	ttype "$shell> " 'vramctl run --limit=0=4' Tab
	twait '4G'
	ttype "$shell> " 'vramctl run --limit 0=4G,' Tab
	twait '4G,1='
fi
ttype "$shell> " 'vramctl run --limit 1G -- printf' Tab X
twait 'bash> vramctl run --limit 1G -- printf X'
tmux -S "$sock" kill-server

# zsh: its completion system, with compinit and the script in fpath.
if command -v zsh >/dev/null; then
	shell=zsh
	mkdir -p zfunc
	vramctl completion zsh >zfunc/_vramctl
	tstart "zsh -f -i"
	tkeys "PS1='zsh> '; fpath=($PWD/zfunc \$fpath); autoload -U compinit; compinit -u -D; echo READY" Enter
	twait READY
	ttype "$shell> " 'vramctl ru' Tab X
	twait 'zsh> vramctl run X'
	ttype "$shell> " 'vramctl status --format j' Tab
	twait 'zsh> vramctl status --format json'
	ttype "$shell> " 'vramctl run --limit 4' Tab Tab
	twait '4G'
	ttype "$shell> " 'vramctl run --group tr' Tab
	twait 'zsh> vramctl run --group trainers'
	ttype "$shell> " 'vramctl run --limit 1G -- printf' Tab X
	twait 'zsh> vramctl run --limit 1G -- printf X'
	ttype "$shell> " 'vramctl kernel remove py' Tab Tab
	twait 'pyk'
	tmux -S "$sock" kill-server
else
	echo "note: zsh not installed; zsh completion not tested"
fi
release_group
finish
