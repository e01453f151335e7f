// moonflow for C++ hosts: #include <moonflow/moonflow.hpp>, link moonflow::moonflow (CMake) or
// `pkg-config --cflags --libs moonflow`. Needs C++17. See the README's "Embedding" section.
#pragma once
#include "engine.hpp"
#include "error.hpp"
#include "tensor.hpp"
