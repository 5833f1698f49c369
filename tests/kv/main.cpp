// Catch2's main for the KV-cache reference tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
