// A volume: make one, change it, close it, open it again (the journal is replayed), compact it.
#include <packfs/volume.hpp>

#include <cstdio>
#include <cstdlib>
#include <string>

int main(int argc, char** argv) {
    using namespace packfs;
    const std::string dir = argc > 1 ? argv[1] : "./example-volume";

    VolumeInit init;
    init.durability = Durability::batch;  // each change durable when it returns
    if (auto ok = Volume::create(dir, init); !ok) {
        std::fprintf(stderr, "%s\n", ok.error().message().c_str());
        return 1;
    }
    {
        auto volume = Volume::open(dir);
        if (!volume) return 1;
        (void)(*volume)->mkdir("/notes");
        (void)write_file(**volume, "/notes/today.txt", "written through the journal\n");
    }  // closed: nothing is kept only in memory

    auto volume = Volume::open(dir);  // maps the pack, replays the journal
    if (!volume) return 1;
    std::printf("replayed %llu records\n",
                static_cast<unsigned long long>((*volume)->recovery().records_replayed));
    auto stats = (*volume)->compact();  // the journal folded into a fresh pack
    if (!stats) return 1;
    std::printf("generation %llu: %s",
                static_cast<unsigned long long>(stats->generation),
                read_file(**volume, "/notes/today.txt")->c_str());
    return 0;
}
