// A real OCI registry (Debian's docker-registry, CNCF distribution 2.8) for the C++ remote-pack
// tests: started once per test process on 127.0.0.1 at a free port with its storage in a fresh
// temporary directory, stopped and removed at exit. When it cannot start, `start_error()` says
// why and `registry()` is empty. tests/support/registry.sh is the shell twin.
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "support/nginx_server.hpp"

namespace packfs::test_support {

class RegistryServer {
public:
    static RegistryServer& shared() {
        static RegistryServer server;
        return server;
    }
    // "127.0.0.1:PORT", or "" when it did not start.
    const std::string& registry() const { return registry_; }
    const std::string& start_error() const { return error_; }

    ~RegistryServer() {
        if (pid_ > 0) {
            ::kill(pid_, SIGTERM);
            int status = 0;
            ::waitpid(pid_, &status, 0);
        }
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }

private:
    RegistryServer() {
        const char* bin = "/usr/bin/docker-registry";
        if (::access(bin, X_OK) != 0) {
            error_ = "docker-registry is not installed (scripts/install-deps.sh installs it)";
            return;
        }
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/packfs-registry-XXXXXX";
        if (::mkdtemp(tmpl.data()) == nullptr) {
            error_ = "mkdtemp failed";
            return;
        }
        dir_ = tmpl;
        for (int attempt = 0; attempt < 5 && registry_.empty(); ++attempt) {
            const int port = NginxServer::free_port();
            const std::string config = (dir_ / "config.yml").string();
            std::ofstream(config) << "version: 0.1\nlog:\n  level: warn\nstorage:\n  filesystem:\n"
                                  << "    rootdirectory: " << (dir_ / "storage").string()
                                  << "\nhttp:\n  addr: 127.0.0.1:" << port << "\n";
            const std::string log = (dir_ / "registry.log").string();
            // posix_spawn, not fork: a fork of this multi-threaded process is what TSan refuses.
            posix_spawn_file_actions_t actions;
            posix_spawn_file_actions_init(&actions);
            posix_spawn_file_actions_addopen(&actions, 1, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC,
                                             0644);
            posix_spawn_file_actions_adddup2(&actions, 1, 2);
            char* const argv[] = {const_cast<char*>(bin), const_cast<char*>("serve"),
                                  const_cast<char*>(config.c_str()), nullptr};
            if (::posix_spawn(&pid_, bin, &actions, nullptr, argv, environ) != 0) pid_ = -1;
            posix_spawn_file_actions_destroy(&actions);
            if (pid_ > 0 && NginxServer::wait_listening(port)) {
                registry_ = "127.0.0.1:" + std::to_string(port);
            } else if (pid_ > 0) {
                ::kill(pid_, SIGTERM);
                ::waitpid(pid_, nullptr, 0);
                pid_ = -1;
            }
        }
        if (registry_.empty()) {
            std::ifstream in(dir_ / "registry.log");
            error_ = "docker-registry did not start: " +
                     std::string(std::istreambuf_iterator<char>(in), {});
        }
    }

    std::filesystem::path dir_;
    pid_t pid_ = -1;
    std::string registry_, error_;
};

}  // namespace packfs::test_support
