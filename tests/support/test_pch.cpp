// Compiles the tests precompiled header (test_pch.hpp) once: every test target reuses it.
