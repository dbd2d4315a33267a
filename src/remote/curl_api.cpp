#include "remote/curl_api.hpp"

#include <dlfcn.h>

#include <mutex>
#include <string>

namespace packfs::remote {
namespace {

CurlApi g_api{};
std::string g_failure;  // set once when loading failed

template <class F>
bool resolve(void* lib, const char* name, F& into) {
    into = reinterpret_cast<F>(::dlsym(lib, name));
    if (into) return true;
    g_failure = std::string("libcurl.so.4 has no ") + name;
    return false;
}

void load_once() {
    // RTLD_LOCAL: its symbols (and its dependencies') stay out of the global namespace.
    // (Debian's two builds: libcurl4 with OpenSSL, libcurl3-gnutls with GnuTLS.)
    void* lib = ::dlopen("libcurl.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = ::dlopen("libcurl-gnutls.so.4", RTLD_NOW | RTLD_LOCAL);
    if (!lib) {
        const char* why = ::dlerror();
        g_failure = std::string("remote packs need libcurl (Debian: libcurl4): ") +
                    (why ? why : "libcurl.so.4 not found");
        return;
    }
    CurlApi api{};
    if (!resolve(lib, "curl_global_init", api.global_init) ||
        !resolve(lib, "curl_easy_init", api.easy_init) ||
        !resolve(lib, "curl_easy_setopt", api.easy_setopt) ||
        !resolve(lib, "curl_easy_perform", api.easy_perform) ||
        !resolve(lib, "curl_easy_getinfo", api.easy_getinfo) ||
        !resolve(lib, "curl_easy_reset", api.easy_reset) ||
        !resolve(lib, "curl_easy_cleanup", api.easy_cleanup) ||
        !resolve(lib, "curl_easy_strerror", api.easy_strerror) ||
        !resolve(lib, "curl_slist_append", api.slist_append) ||
        !resolve(lib, "curl_slist_free_all", api.slist_free_all))
        return;
    if (const CURLcode code = api.global_init(CURL_GLOBAL_DEFAULT); code != CURLE_OK) {
        g_failure = std::string("libcurl failed to initialise: ") + api.easy_strerror(code);
        return;
    }
    g_api = api;  // (the library stays loaded for the process's life)
}

}  // namespace

Result<const CurlApi*> load_curl() {
    static std::once_flag once;
    std::call_once(once, load_once);
    if (!g_failure.empty()) return fail(EIO, "remote", g_failure);
    return &g_api;
}

const CurlApi& curl() noexcept { return g_api; }

}  // namespace packfs::remote
