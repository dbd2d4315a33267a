// libcurl, loaded when the first remote client is made (dlopen of libcurl.so.4), not linked: a
// command or mount that opens no URL loads no network library (libcurl brings Kerberos, LDAP,
// GnuTLS, SSH and more, about 30 shared libraries, to every process that links it). The
// declarations are curl.h's; only the calls go through these pointers.
#pragma once

#define CURL_DISABLE_TYPECHECK  // (its checks are macros over the curl_easy_* names)
#include <curl/curl.h>

#include "packfs/error.hpp"

namespace packfs::remote {

struct CurlApi {
    CURLcode (*global_init)(long flags);
    CURL* (*easy_init)();
    CURLcode (*easy_setopt)(CURL* handle, CURLoption option, ...);
    CURLcode (*easy_perform)(CURL* handle);
    CURLcode (*easy_getinfo)(CURL* handle, CURLINFO info, ...);
    void (*easy_reset)(CURL* handle);
    void (*easy_cleanup)(CURL* handle);
    const char* (*easy_strerror)(CURLcode code);
    curl_slist* (*slist_append)(curl_slist* list, const char* line);
    void (*slist_free_all)(curl_slist* list);
};

// libcurl loaded and initialised (once per process; later calls return the same), or EIO
// naming what could not be loaded.
Result<const CurlApi*> load_curl();
// The loaded API: only after load_curl() succeeded.
const CurlApi& curl() noexcept;

}  // namespace packfs::remote
