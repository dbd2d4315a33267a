#include "support/host_backend.hpp"
