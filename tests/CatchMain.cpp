// Catch2's implementation and main, compiled once and linked into every
// test executable (a copy per executable cost ~30 s of a clean build each).
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
