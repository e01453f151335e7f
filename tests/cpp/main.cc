// Catch2's main for the C++ test executable.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
