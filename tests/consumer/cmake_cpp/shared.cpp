// Built only to show that libfbngrad.a links into a shared library
// (every object position-independent, no undefined symbols left).
#include "fbngrad/fbngrad.h"

extern "C" const char *consumer_shared_fbngrad_version() { return fbngrad_version(); }
