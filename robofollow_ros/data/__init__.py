"""Demonstrations: expert collection of the training labels, LeRobot / raw HDF5 / rosbag2 exports, episode videos.

``run_collection`` writes the published raw layout (protocol §8.2) resumably; ``export_lerobot`` turns a
collection into a LeRobot v3.0 dataset; ``write_episode_video`` makes a browser-playable MP4 of an episode.
"""
