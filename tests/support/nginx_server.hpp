// A real nginx for the C++ remote-pack tests: started once per test process on 127.0.0.1 at a
// free port, serving a fresh temporary directory, stopped and removed at exit. When it cannot
// start, `start_error()` says why and `url()` is empty: the test that needs it fails with that
// reason (nginx comes from scripts/install-deps.sh). tests/support/nginx.sh is the shell twin.
#pragma once

#include <arpa/inet.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <thread>

namespace packfs::test_support {

class NginxServer {
public:
    // The process's server, started on first use.
    static NginxServer& shared() {
        static NginxServer server;
        return server;
    }

    const std::filesystem::path& root() const { return root_; }
    // "http://127.0.0.1:PORT/<name>", or "" when the server did not start.
    std::string url(const std::string& name) const {
        return port_ == 0 ? std::string()
                          : "http://127.0.0.1:" + std::to_string(port_) + "/" + name;
    }
    const std::string& start_error() const { return error_; }
    // While stalled, every answer's body trickles at a byte a second: a server that has gone
    // quiet in the middle of its transfers, as behind a lossy link.
    void stall(bool on) const {
        if (on)
            std::ofstream(dir_ / "stall").put('1');
        else
            std::filesystem::remove(dir_ / "stall");
    }
    // Lines of the access log so far ("METHOD URI STATUS BYTES RANGE").
    std::string access_log() const { return slurp_text(dir_ / "access.log"); }

    ~NginxServer() {
        stop();
        std::error_code ignored;
        std::filesystem::remove_all(dir_, ignored);
    }

private:
    NginxServer() {
        const char* base = std::getenv("TMPDIR");
        std::string tmpl = std::string(base && *base ? base : "/tmp") + "/packfs-nginx-XXXXXX";
        if (::mkdtemp(tmpl.data()) == nullptr) {
            error_ = "mkdtemp failed";
            return;
        }
        dir_ = tmpl;
        root_ = dir_ / "www";
        std::filesystem::create_directories(root_);
        std::filesystem::create_directories(dir_ / "tmp");
        const char* candidates[] = {"/usr/sbin/nginx", "/usr/bin/nginx"};
        std::string nginx;
        for (const char* c : candidates) {
            if (::access(c, X_OK) == 0) nginx = c;
        }
        if (nginx.empty()) {
            error_ = "nginx is not installed (scripts/install-deps.sh installs nginx-light)";
            return;
        }
        for (int attempt = 0; attempt < 5 && port_ == 0; ++attempt) {
            const int port = free_port();
            write_config(port);
            const std::string cmd = nginx + " -c " + (dir_ / "nginx.conf").string() + " -p " +
                                    dir_.string() + " 2>" + (dir_ / "start.err").string();
            if (std::system(cmd.c_str()) == 0 && wait_listening(port)) port_ = port;
        }
        if (port_ == 0)
            error_ = "nginx did not start: " + slurp_text(dir_ / "start.err") +
                     slurp_text(dir_ / "error.log");
    }

    static std::string slurp_text(const std::filesystem::path& p) {
        std::ifstream in(p);
        std::stringstream ss;
        ss << in.rdbuf();
        return ss.str();
    }

public:  // also for the registry's starter
    static int free_port() {
        const int s = ::socket(AF_INET, SOCK_STREAM, 0);
        sockaddr_in a{};
        a.sin_family = AF_INET;
        a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
        socklen_t len = sizeof a;
        int port = 0;
        if (::bind(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0 &&
            ::getsockname(s, reinterpret_cast<sockaddr*>(&a), &len) == 0)
            port = ntohs(a.sin_port);
        ::close(s);
        return port;
    }

    static bool wait_listening(int port) {
        for (int i = 0; i < 100; ++i) {
            const int s = ::socket(AF_INET, SOCK_STREAM, 0);
            sockaddr_in a{};
            a.sin_family = AF_INET;
            a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
            a.sin_port = htons(static_cast<uint16_t>(port));
            const bool up = ::connect(s, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0;
            ::close(s);
            if (up) return true;
            std::this_thread::sleep_for(std::chrono::milliseconds(50));
        }
        return false;
    }

private:
    void write_config(int port) const {
        const std::string d = dir_.string();
        std::ofstream conf(dir_ / "nginx.conf");
        if (::getuid() == 0) conf << "user root;\n";
        conf << "worker_processes 2;\ndaemon on;\npid " << d << "/nginx.pid;\nerror_log " << d
             << "/error.log;\nevents { worker_connections 512; }\nhttp {\n"
             << "  log_format packfs '$request_method $uri $status $body_bytes_sent "
                "\"$http_range\"';\n"
             << "  access_log " << d << "/access.log packfs;\n"
             << "  client_body_temp_path " << d << "/tmp/body;\n  proxy_temp_path " << d
             << "/tmp/proxy;\n  fastcgi_temp_path " << d << "/tmp/fastcgi;\n  uwsgi_temp_path " << d
             << "/tmp/uwsgi;\n  scgi_temp_path " << d << "/tmp/scgi;\n"
             << "  sendfile on;\n  keepalive_requests 1000000;\n"
             << "  server { listen 127.0.0.1:" << port << "; root " << root_.string() << ";\n"
             << "    location / { if (-f " << d << "/stall) { set $limit_rate 1; } }\n  }\n}\n";
    }

    void stop() {
        std::ifstream pid_file(dir_ / "nginx.pid");
        pid_t pid = 0;
        if (pid_file >> pid && pid > 0) {
            ::kill(pid, SIGTERM);
            for (int i = 0; i < 50 && ::kill(pid, 0) == 0; ++i)
                std::this_thread::sleep_for(std::chrono::milliseconds(20));
        }
    }

    std::filesystem::path dir_, root_;
    int port_ = 0;
    std::string error_;
};

}  // namespace packfs::test_support
