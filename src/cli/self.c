/*
 * self.c - vramctl's own programs (this command and its libexec helpers)
 * say so to the injected library, which the machine's preload
 * (`vramctl preload`) or an enclosing run may load into them: a program
 * that reads NVML to show the card (status, top, export, the run's
 * watcher) must see the card, never a cap, and never join a group.
 *
 * The mark is a symbol the executable exports (the link's
 * --export-dynamic-symbol, src/cli/module.mk); the library looks it up when
 * it settles (hook/config.c) and passes everything through.
 */
#include "common/compiler.h"

__attribute__((visibility("default"), used)) const char vramctl_cli_v1[] = "vramctl";
