# Exit statuses as env(1) and timeout(1): the command's own, 125, 126, 127,
# 128+N for death by signal N; and signals sent to vramctl reach the command.
. "$VR_SRC/tests/cli/common.bash"

"$V" run --limit 1G -- true
expect_rc 0 $? "true"
"$V" run --limit 1G -- sh -c 'exit 7'
expect_rc 7 $? "exit 7"
"$V" run -- sh -c 'exit 3'
expect_rc 3 $? "no --limit, exit 3"
"$V" run --limit 1G -- no-such-command-vramctl-test 2>err
expect_rc 127 $? "not found"
expect_grep "no-such-command-vramctl-test" err "not found"
"$V" run --limit 1G -- ./no/such/path 2>err
expect_rc 127 $? "no such path"
printf '#!/bin/sh\necho hi\n' >notexec
chmod 0644 notexec
"$V" run --limit 1G -- ./notexec 2>err
expect_rc 126 $? "not executable"
expect_grep "notexec" err "not executable"
mkdir -p adir
"$V" run --limit 1G -- ./adir 2>err
expect_rc 126 $? "a directory"
# A script without #! runs with /bin/sh, as execvp(3) and env(1) run it
# (vramctl starts commands with posix_spawnp, which refuses it: ENOEXEC).
printf 'exit 9\n' >noshebang
chmod 0755 noshebang
"$V" run --limit 1G -- ./noshebang
expect_rc 9 $? "a script without #!"
# A signal vramctl was started ignoring stays ignored in the command.
sh -c 'trap "" USR1; exec "$1" run --limit 1G -- sh -c "kill -USR1 \$\$; exit 5"' sh "$V"
expect_rc 5 $? "an ignored signal stays ignored"
"$V" run --limit 1G -- sh -c 'kill -KILL $$'
expect_rc 137 $? "SIGKILL"
"$V" run --limit 1G -- sh -c 'kill -TERM $$'
expect_rc 143 $? "SIGTERM"
"$V" run --limit 1G -- sh -c 'kill -USR1 $$'
expect_rc 138 $? "SIGUSR1"

# Forwarding: the child says it is ready through a FIFO (no sleeps as
# synchronisation), then vramctl gets SIGTERM; the child's trap decides the
# status.
# Background jobs of a script start with SIGINT and SIGQUIT ignored, which
# vramctl rightly passes on: env --default-signal gives them back.
for sig in TERM INT QUIT HUP USR1 USR2; do
	rm -f ready
	mkfifo ready
	env --default-signal=INT,QUIT "$V" run --limit 1G -- \
		sh -c "trap 'exit 42' $sig; echo up >ready; while :; do sleep 0.05; done" &
	pid=$!
	read -r _ <ready
	kill -s "$sig" "$pid"
	wait "$pid"
	expect_rc 42 $? "SIG$sig forwarded to the command"
done

# A command's own arguments that look like options are its own.
"$V" run --limit 1G -- sh -c 'test "$1" = --limit' sh --limit
expect_rc 0 $? "arguments after the command"
"$V" run --limit 1G sh -c 'test "$1" = --growth' sh --growth
expect_rc 0 $? "options end at the command without --"
"$V" run --help >out
expect_rc 0 $? "--help"
expect_grep "usage: vramctl run" out "--help"
finish
