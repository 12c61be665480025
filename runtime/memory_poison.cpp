#include "memory_poison.h"

#ifdef FBNGRAD_MEMCHECK
namespace fbngrad::runtime {

bool g_running_on_valgrind = [] { return RUNNING_ON_VALGRIND != 0; }();

void memcheck_mark(const uint8_t *p, size_t bytes, bool poisoned) {
    if (poisoned)
        (void)VALGRIND_MAKE_MEM_NOACCESS(p, bytes);
    else
        (void)VALGRIND_MAKE_MEM_UNDEFINED(p, bytes);
}

}  // namespace fbngrad::runtime
#endif
