/*
 * test.h - the assertions every C test uses. A failed assertion prints both
 * operands with the file and line, then exits 1; tests/run counts the result.
 * A test that cannot run here calls SKIP(reason), which exits 77.
 */
#ifndef VRAMCTL_TEST_H
#define VRAMCTL_TEST_H

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TEST_FAILF(...)                                                                            \
	do {                                                                                       \
		fprintf(stderr, "%s:%d: ", __FILE__, __LINE__);                                    \
		fprintf(stderr, __VA_ARGS__);                                                      \
		fputc('\n', stderr);                                                               \
		exit(1);                                                                           \
	} while (0)

#define ASSERT(cond)                                                                               \
	do {                                                                                       \
		if (!(cond))                                                                       \
			TEST_FAILF("assertion failed: %s", #cond);                                 \
	} while (0)

#define ASSERT_INT_OP(a, op, b)                                                                    \
	do {                                                                                       \
		long long a_ = (long long)(a), b_ = (long long)(b);                                \
		if (!(a_ op b_))                                                                   \
			TEST_FAILF("expected %s %s %s, got %lld vs %lld", #a, #op, #b, a_, b_);    \
	} while (0)

#define ASSERT_UINT_OP(a, op, b)                                                                   \
	do {                                                                                       \
		unsigned long long a_ = (unsigned long long)(a), b_ = (unsigned long long)(b);     \
		if (!(a_ op b_))                                                                   \
			TEST_FAILF("expected %s %s %s, got %llu vs %llu", #a, #op, #b, a_, b_);    \
	} while (0)

#define ASSERT_EQ(a, b)  ASSERT_INT_OP(a, ==, b)
#define ASSERT_NE(a, b)  ASSERT_INT_OP(a, !=, b)
#define ASSERT_LT(a, b)  ASSERT_INT_OP(a, <, b)
#define ASSERT_LE(a, b)  ASSERT_INT_OP(a, <=, b)
#define ASSERT_GT(a, b)  ASSERT_INT_OP(a, >, b)
#define ASSERT_GE(a, b)  ASSERT_INT_OP(a, >=, b)
#define ASSERT_UEQ(a, b) ASSERT_UINT_OP(a, ==, b)
#define ASSERT_ULE(a, b) ASSERT_UINT_OP(a, <=, b)
#define ASSERT_UGE(a, b) ASSERT_UINT_OP(a, >=, b)

#define ASSERT_STR_EQ(a, b)                                                                        \
	do {                                                                                       \
		const char *a_ = (a), *b_ = (b);                                                   \
		if (!a_ || !b_ || strcmp(a_, b_) != 0)                                             \
			TEST_FAILF("expected %s == %s, got \"%s\" vs \"%s\"", #a, #b,              \
			           a_ ? a_ : "(null)", b_ ? b_ : "(null)");                        \
	} while (0)

/* A CUDA or NVML call that must return the given code. */
#define ASSERT_CU(call, expect)                                                                    \
	do {                                                                                       \
		int vr__rc = (int)(call);                                                          \
		if (vr__rc != (int)(expect))                                                       \
			TEST_FAILF("%s returned %d, expected %d", #call, vr__rc, (int)(expect));   \
	} while (0)

#define SKIP(...)                                                                                  \
	do {                                                                                       \
		printf("skipped: ");                                                               \
		printf(__VA_ARGS__);                                                               \
		putchar('\n');                                                                     \
		exit(77);                                                                          \
	} while (0)

/* Tests that need the simulator's own controls skip against a real driver. */
#define REQUIRE_SIM()                                                                              \
	do {                                                                                       \
		const char *d_ = getenv("VR_TEST_DRIVER");                                         \
		if (d_ && strcmp(d_, "sim") != 0)                                                  \
			SKIP("needs the simulated driver (VR_TEST_DRIVER=%s)", d_);                \
	} while (0)

#endif /* VRAMCTL_TEST_H */
