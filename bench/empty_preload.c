/*
 * empty_preload.c - a library with nothing in it: the floor of what
 * preloading any one small library costs a program (bench/preload_bench.c).
 */
int vr_empty_preload_v1;
int vr_empty_preload_v1 = 1;
