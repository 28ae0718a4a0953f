/*
 * fake_framework - built as libc10_cuda.so for the report's tests: a library
 * named as PyTorch's CUDA allocator's, so that a process that loads it is
 * seen as running a framework with a caching allocator. It does nothing.
 */
int vr_fake_framework(void);
__attribute__((visibility("default"))) int vr_fake_framework(void)
{
	return 0;
}
