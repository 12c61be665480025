// Under valgrind (tests/valgrind/CMakeLists.txt): fbngrad's own allocators
// mark what they have not handed out as unaddressable (runtime/memory_poison.h),
// so that memcheck reports a stray access into it as it does past a malloc'd
// buffer. Each case touches one byte; the "stray" cases must make memcheck
// report an invalid access, the others nothing. Natively every case just runs.
//
//     poison_probe CASE     (the cases: poison_probe with no argument)
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

#include "aligned_block.h"
#include "call_arena.h"
#include "scratch_cache.h"
#include "task_stack.h"

using namespace fbngrad::runtime;

namespace {

// The access itself, which no optimizer may drop.
int touch(const uint8_t *p) { return *static_cast<const volatile uint8_t *>(p); }

// A buffer just handed out, written as a kernel would (memcheck: defined).
uint8_t *written(void *p, size_t bytes) { return static_cast<uint8_t *>(std::memset(p, 1, bytes)); }

int arena(bool stray) {
    AlignedBlock b(4096);
    CallArena a;
    a.lend(b.base, 4096);
    uint8_t *p = written(a.allocate(100), 100);
    const int v = touch(stray ? p + 120 : p + 99);  // past the 8 spare bytes after the buffer, or its last
    a.lend(nullptr, 0);
    return v;
}

int task_stack(bool stray) {
    AlignedBlock b(4096);
    TaskStack s;
    s.use(b.base, 4096);
    uint8_t *p = written(s.allocate(64), 64);
    if (stray) s.release(p);  // a use after its free
    const int v = touch(p + 10);
    if (!stray) s.release(p);
    s.use(nullptr, 0);
    return v;
}

int scratch_cache(bool stray) {
    ScratchCache c({1024, 1 << 20, 1 << 20, 4});
    uint8_t *p = written(c.allocate(4096), 4096);
    c.release(p);  // kept for the next request
    if (!stray) p = written(c.allocate(4096), 4096);  // the kept block again
    const int v = touch(p + 100);  // stray: in the kept block, which nobody holds
    if (!stray) c.release(p);
    return v;
}

struct Case {
    const char *name;
    int (*run)(bool);
    bool stray;
};
const Case kCases[] = {
    {"arena_stray", arena, true},         {"arena_inside", arena, false},
    {"task_stack_stray", task_stack, true}, {"task_stack_inside", task_stack, false},
    {"scratch_cache_stray", scratch_cache, true}, {"scratch_cache_inside", scratch_cache, false},
};

}  // namespace

int main(int argc, char **argv) {
    if (argc == 2)
        for (const Case &c : kCases)
            if (c.name == std::string(argv[1])) {
                std::printf("%s read %d\n", c.name, c.run(c.stray));
                return 0;
            }
    std::fprintf(stderr, "usage: poison_probe CASE, one of:");
    for (const Case &c : kCases) std::fprintf(stderr, " %s", c.name);
    std::fprintf(stderr, "\n");
    return 2;
}
