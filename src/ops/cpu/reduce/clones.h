// HVDC_CLONES: a kernel compiled for x86-64-v4 (AVX-512), x86-64-v3 (AVX2) and the baseline,
// picked once at load time (target_clones, an ifunc). The arch= levels rather than single
// features: v4 brings AVX512BW/DQ besides AVX512F. Callers make sure no product feeds an add in
// these loops, so FMA contraction cannot make the clones round differently.
//
// Under ThreadSanitizer the kernels are built once for the baseline: GCC instruments the ifunc
// resolver, which the dynamic loader runs before the TSan runtime is initialized, and every
// program would crash before main.
#pragma once

#if defined(__SANITIZE_THREAD__)
#define HVDC_CLONES
#else
#define HVDC_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#endif
