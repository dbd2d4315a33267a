// packfs: the command line tool. Thin over the library.
#include <CLI/CLI.hpp>

int main(int argc, char** argv) {
    CLI::App app{"PackFS: packs, overlays and volumes"};
    app.require_subcommand(1);
    CLI11_PARSE(app, argc, argv);
    return 0;
}
