// The Catch2 main, alone in its TU so that it is compiled once.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>
