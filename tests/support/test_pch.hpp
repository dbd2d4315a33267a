// The precompiled header of every test target (tests/CMakeLists.txt): what most test files
// include and nothing of PackFS's own, so it is built once a build and only a compiler or
// dependency upgrade rebuilds it. GoogleTest, fmt and these standard headers were 2-5 s of a
// test file's 8-14 s compile; a hundred test files parse them.
#pragma once

#include <fmt/format.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstring>
#include <expected>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <set>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <unordered_map>
#include <vector>
